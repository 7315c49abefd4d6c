#!/bin/bash
#PBS -p -3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
