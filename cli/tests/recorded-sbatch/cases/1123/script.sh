#!/bin/bash
#PBS -l accelerator=true
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
