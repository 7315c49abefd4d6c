#!/bin/bash
#PBS -l mem=1024
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
